package regfile

// SetBeforeOpen sets the hook run between the check and the open.
func SetBeforeOpen(f func(string)) (restore func()) {
	old := beforeOpen
	beforeOpen = f
	return func() { beforeOpen = old }
}
