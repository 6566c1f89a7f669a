"""Finding the models a user names: a local folder or file, or a Hugging Face Hub repo (`hub`)."""
