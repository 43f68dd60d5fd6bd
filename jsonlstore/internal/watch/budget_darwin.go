package watch

import "syscall"

// watchBudget is how many directories the watcher may watch at once, or -1
// for no limit of its own. kqueue holds a descriptor open for every watched
// directory and for every file in it (about six per session directory), so
// on macOS the watcher keeps to a quarter of the descriptor limit, at most
// 256 directories, and polls the rest rather than starve the process of
// descriptors.
func watchBudget() int {
	const perDir, maxDirs = 6, 256
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 16
	}
	return int(min(rl.Cur/4/perDir, maxDirs))
}
