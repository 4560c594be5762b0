"""The lessons' multi-panel figures, one module per lesson, so that a lesson's body
shows the idea, the code that does it and one call that draws the figure.

Each function takes the numbers a lesson computed and returns a matplotlib Figure;
the lesson passes it to _lesson.figure(), which saves it (and shows it in a notebook):

    from lessons.plots import tmaf as plots
    figure(plots.levels(model, x, y), "levels.png")

Text tables go through table() below, so that every lesson aligns its columns alike.
"""


def table(rows) -> str:
    """Rows of cells (all of one length) as aligned text: first column left, the rest right."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(map(len, column)) + 2 for column in zip(*cells)]
    return "\n".join("".join(c.rjust(w) if i else c.ljust(w) for i, (c, w)
                             in enumerate(zip(row, widths))).rstrip() for row in cells)
