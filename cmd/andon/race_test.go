//go:build race

package main

// raceEnabled reports whether the tests run with the race detector, so the
// andon binary they run is built with it too.
const raceEnabled = true
