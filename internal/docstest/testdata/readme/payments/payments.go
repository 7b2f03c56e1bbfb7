// Package payments stands for the payment service the README's handler
// calls.
package payments

import (
	"context"
	"sync"
)

var (
	mu      sync.Mutex
	charges = map[string]string{}
)

// Charge charges an order once per idempotency key and returns the charge's
// ID; a repeated key returns the first charge.
func Charge(_ context.Context, orderID string, amount int, idempotencyKey string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if id, ok := charges[idempotencyKey]; ok {
		return id, nil
	}
	id := "ch-" + orderID
	charges[idempotencyKey] = id
	_ = amount
	return id, nil
}

// Count is how many charges were made.
func Count() int {
	mu.Lock()
	defer mu.Unlock()
	return len(charges)
}
