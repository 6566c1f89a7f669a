"""The pipelines that run the rules: a pair check (`check`) and the launch-file check (`launch`)."""
