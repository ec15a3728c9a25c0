//go:build !race

package lag

// raceDetector says the tests were built with -race.
const raceDetector = false
