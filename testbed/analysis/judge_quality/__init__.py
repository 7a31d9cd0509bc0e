"""How good a judge is: agreement with people, corrected rates, labelled sets, training the learned judge."""
