#!/bin/sh
# Usage: sh greet.sh [NAME]
# Prints a greeting for NAME, or for the world when no name is given.
echo "Hello, $name"
