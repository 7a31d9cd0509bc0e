"""The learned local judge: a linear model over the rule features and static sentence embeddings, trained on labelled turns."""
