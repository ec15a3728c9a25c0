//go:build race

package pgtest

// RaceDetector says the tests were built with -race: assertions of timing
// then measure the detector, and tests skip them.
const RaceDetector = true
