package main

import (
	"fmt"
	"regexp"
)

// kebab is the shape of a vector's name, which is also its file's.
var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Generate makes the corpus: every vector's file (<name>.json) and its
// bytes. It is deterministic: fixed keys, fixed times, no randomness.
func Generate() (map[string][]byte, error) {
	w, err := newWorld()
	if err != nil {
		return nil, err
	}
	rs, err := w.receipts()
	if err != nil {
		return nil, err
	}
	var specs []spec
	for _, part := range [][]spec{
		w.genuine(rs), w.clocks(rs), w.fieldForgeries(rs), w.batchVectors(rs), w.payloadVectors(rs),
		w.receiptJSONVectors(rs), w.rootVectors(rs), w.evmVectors(rs), w.solanaVectors(rs), w.disagreeing(rs), w.logVectors(rs), w.witnessVectors(rs),
	} {
		specs = append(specs, part...)
	}
	files := make(map[string][]byte, len(specs))
	for _, s := range specs {
		if !kebab.MatchString(s.name) || !kebab.MatchString(s.class) {
			return nil, fmt.Errorf("vector %q of class %q: names are kebab-case", s.name, s.class)
		}
		v, err := s.vector(w)
		if err != nil {
			return nil, err
		}
		b, err := encode(v)
		if err != nil {
			return nil, err
		}
		file := s.name + ".json"
		if _, dup := files[file]; dup {
			return nil, fmt.Errorf("two vectors named %s", s.name)
		}
		files[file] = b
	}
	return files, nil
}
