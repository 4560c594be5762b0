"""The rows a lesson adds to its closing "paper vs ours" table, one function per claim.

A lesson measures; the function it calls with those measurements prints the store's
paper-scale rows of the same runs (_lesson.stored), picks the best evidence
(verdicts.evidence: the store's when it holds every row from the current code, else
this run's), applies the claim's rule from lessons/verdicts.py, and adds the row with
its rule and what was measured (Results.add). So a lesson reads as the idea, the code
that does it, the figure, what to read in it, and one line for the verdict.
"""
