package client

// Options returns the client's options with their defaults filled in, so
// that code triggering runs by another path (event ingestion, the HTTP API)
// applies the same limits, run retention and clock as the client does.
func (c *Client) Options() Options { return c.opts }
