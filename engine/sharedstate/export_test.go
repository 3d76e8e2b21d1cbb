package sharedstate

// StopRenewing stops a lease's renewals without releasing it, as a killed
// holder does.
func (l *Lease) StopRenewing() {
	close(l.stop)
	<-l.done
}
