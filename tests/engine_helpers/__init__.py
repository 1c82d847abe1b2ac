"""Helpers the engine tests share: real report configs, the CLI in a subprocess, the silent-mapping check."""
