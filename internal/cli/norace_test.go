//go:build !race

package cli

// raceDetector says the tests were built with -race.
const raceDetector = false
