"""tipcgen: render, run and check PaddlePaddle TIPC test chains."""

__version__ = "0.1.0"
