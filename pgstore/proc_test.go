package pgstore_test

const procModeEnv = "PGSTORE_PROC_MODE"

func procHelperMain(mode string) int { return 2 }
