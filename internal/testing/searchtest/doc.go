// Package searchtest holds the reference a store's search is compared
// with: the answer to a query read from the sessions' histories, without
// any index of the store's (the conformance suite's search checks, and
// the file store's own tests of its index, compare with it).
package searchtest
