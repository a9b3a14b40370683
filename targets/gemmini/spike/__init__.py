"""Spike extension wrapper and bare-metal runtime for the Gemmini model (package data; built by ..build)."""
