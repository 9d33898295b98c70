package bus

import (
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MaxHeaderBytes is JetStream's bound on the headers of a stored message:
// a publish whose headers are longer is refused ("header size exceeds
// maximum allowed of 64k"), whatever the server's max_payload.
const MaxHeaderBytes = 1<<16 - 1

// jsErrCodeStreamHeaderExceedsMaximum is the server's error code for
// headers over MaxHeaderBytes (nats.go names no constant for it).
const jsErrCodeStreamHeaderExceedsMaximum jetstream.ErrorCode = 10097

// TooLarge reports whether a publish failed because the message can never
// be stored as it is: over the server's max_payload (nats.ErrMaxPayload),
// headers over MaxHeaderBytes, or over the stream's max message size.
// Publishing it again cannot help: the publisher has to shrink the message
// or record the failure, never leave its input to be redelivered (issue 19:
// such pages were retried 10 times, dead-lettered, and left no record).
func TooLarge(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrCodeStreamHeaderExceedsMaximum, jetstream.JSErrCodeStreamMessageExceedsMaximum:
			return true
		}
	}
	return false
}
