"""One module per ``tokenmill`` sub-command; ``tokenmill.cli`` only assembles them."""
