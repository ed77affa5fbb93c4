"""numpy references the compiled code is checked against."""
