//go:build race

package app_test

// raceDetector says the tests run under -race, whose shadow memory grows
// with every byte the program allocates: memory bounds are looser there.
const raceDetector = true
