"""What a TIPC config is: the layouts' slot tables, the chain's steps, the lossless config model, the generated tree's paths."""
