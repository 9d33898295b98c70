package bus

import "time"

// SetPullExpiry sets how long Pull's requests wait on the server until the
// test ends (restore sets it back); the heartbeat stays, at most half of it.
func SetPullExpiry(d time.Duration) (restore func()) {
	return SetPullTiming(d, min(pullHeartbeat, d/2))
}

// SetPullTiming sets Pull's request expiry and heartbeat (0: the client's
// default, half the expiry) until the test ends.
func SetPullTiming(expiry, heartbeat time.Duration) (restore func()) {
	oldExpiry, oldHeartbeat := pullExpiry, pullHeartbeat
	pullExpiry, pullHeartbeat = expiry, heartbeat
	return func() { pullExpiry, pullHeartbeat = oldExpiry, oldHeartbeat }
}
