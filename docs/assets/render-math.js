// Typeset every formula of the page with the bundled KaTeX: arithmatex's \( \) and \[ \]
// spans in Markdown pages and docstrings, and $ $ / $$ $$ in the lessons' notebook cells.
// document$ is mkdocs-material's page observable (fires on every page shown).
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\[", right: "\\]", display: true },
      { left: "$", right: "$", display: false },
      { left: "\\(", right: "\\)", display: false },
    ],
    throwOnError: false,
  });
});
