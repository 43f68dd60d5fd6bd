package proctest

// DeadlineMargin is deadlineMargin, for the tests of the package.
const DeadlineMargin = deadlineMargin
