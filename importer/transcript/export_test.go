package transcript

// OneLine is oneLine, for the tests that say how a value on one line is
// shown.
var OneLine = oneLine
