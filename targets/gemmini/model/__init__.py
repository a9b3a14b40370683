"""C sources of the native Gemmini model (shipped as package data; built by ..build)."""
