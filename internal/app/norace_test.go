//go:build !race

package app_test

// raceDetector says the tests run under -race (see race_test.go).
const raceDetector = false
