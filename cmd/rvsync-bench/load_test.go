package main

import "testing"

// count agrees with resource: the objects of each resource, counted one by
// one, for sizes that do and do not divide by the number of resources.
func TestObjectSetCount(t *testing.T) {
	for n := range 10 {
		s := objectSet{n: n, namespaces: 3}
		tally := map[string]int{}
		for i := range n {
			tally[s.resource(i)]++
		}
		for _, r := range benchResources {
			if s.count(r) != tally[r] {
				t.Errorf("n=%d: count(%s) = %d, want %d", n, r, s.count(r), tally[r])
			}
		}
	}
}
