//go:build !windows

package tools

// foldPaths: names are compared byte for byte. macOS volumes are usually
// case-insensitive, but a case-sensitive one would let /Proj pass for
// /proj, another directory: refusing a differently cased path is the safe
// side.
const foldPaths = false
