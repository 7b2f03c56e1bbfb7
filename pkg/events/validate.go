package events

// Validate checks events exactly as Push and PushMany do, without writing
// anything and without PushMany's batch limit: the first invalid event
// fails with an *InvalidEventError whose Index is its
// position in in. A caller that pushes a long list in several PushMany
// calls checks it all first, so that a bad event late in the list fails
// it before any of it is stored.
func (i *Ingester) Validate(in []Input) error {
	for n := range in {
		e := in[n]
		if err := i.validate(n, &e); err != nil {
			return err
		}
	}
	return nil
}
