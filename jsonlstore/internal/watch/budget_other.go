//go:build !darwin

package watch

// watchBudget is how many directories the watcher may watch at once, or -1
// for no limit of its own: inotify costs no descriptor per watch, and when
// max_user_watches is reached Add fails with ENOSPC and the watcher polls
// what it could not watch.
func watchBudget() int { return -1 }
