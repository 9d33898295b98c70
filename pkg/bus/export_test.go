package bus

import "time"

// SetPullExpiry sets how long Pull's requests wait on the server until the
// test ends (restore sets it back).
func SetPullExpiry(d time.Duration) (restore func()) {
	old := pullExpiry
	pullExpiry = d
	return func() { pullExpiry = old }
}
