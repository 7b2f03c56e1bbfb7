package idempotency

import "fmt"

// CheckDepth returns an ErrInput *Error when the JSON in data, named what in
// the message, nests objects and arrays deeper than limit levels. Callers
// that accept JSON without deriving a key from it apply the same bound as
// KeyJSON does. It does not validate the JSON otherwise.
func CheckDepth(what string, data []byte, limit int) error {
	if limit <= 0 {
		limit = MaxInputDepthDefault
	}
	if depthExceeds(data, limit) {
		return &Error{Kind: ErrInput, Message: fmt.Sprintf("%s nests deeper than the limit of %d levels", what, limit)}
	}
	return nil
}
