package tools

// foldPaths: NTFS compares names without case (a directory marked case
// sensitive, a WSL feature, is the exception and is not told apart).
const foldPaths = true
