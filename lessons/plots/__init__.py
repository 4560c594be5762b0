"""The lessons' multi-panel figures, one module per lesson, so that a lesson's body
shows the idea, the code that does it and one call that draws the figure.

Each function takes the numbers a lesson computed and returns a matplotlib Figure;
the lesson passes it to _lesson.figure(), which saves it (and shows it in a notebook):

    from lessons.plots import tmaf as plots
    figure(plots.levels(model, x, y), "levels.png")
"""
