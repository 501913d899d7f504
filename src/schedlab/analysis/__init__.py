"""Analysis: closed forms, Markov-chain solvers and bounds that check and complement simulation."""
