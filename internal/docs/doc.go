// Package docs holds no code, only tests of the repository's Markdown.
//
// The README is the user's manual, and GitHub renders it: a table broken by a
// stray blank line shows as a paragraph of pipes, a link to a heading that was
// renamed goes nowhere, and a count of test cases goes stale when cases are
// added. None of these fail a build, so its tests render README.md the way
// GitHub does (GFM, GitHub's heading anchors) and check it against the source.
package docs
