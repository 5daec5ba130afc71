package main

import "iter"

// collect gathers every item of a paginated listing, following the pages to
// the end or to the first error. None is an empty slice, not nil, so that
// --json prints "[]", not "null".
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	items := []T{}
	for item, err := range seq {
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return items, nil
}
