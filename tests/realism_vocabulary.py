"""Words for synthetic user turns on many topics: what the realism tests and `benchmarks/realism_null.py` build from."""

TOPICS = ["recursion", "sourdough bread", "tax returns", "the french revolution", "css grid", "sql joins",
          "photosynthesis", "marathon training", "a cover letter", "docker volumes", "binary search",
          "compound interest", "watercolor painting", "rust lifetimes", "the krebs cycle", "react hooks",
          "linear regression", "chess openings", "git rebase", "climate models"]
ASPECTS = ["edge cases", "performance", "the history", "common mistakes", "a simpler version", "the cost",
           "beginners", "the last step", "an example", "the second point", "memory use", "alternatives"]
