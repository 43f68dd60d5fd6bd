// Package clitest builds the repository's commands and runs them as real
// processes for their tests: each test binary builds the commands it
// drives once, in TestMain, and runs them with a clean environment.
package clitest
