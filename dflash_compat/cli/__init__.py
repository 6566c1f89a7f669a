"""The command line: the click wiring (`app`), one module per command (`commands/`), error rendering
(`errors`) and terminal rendering (`console`). Everything below it is importable without click."""
