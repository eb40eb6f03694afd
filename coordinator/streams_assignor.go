package coordinator

// The streams groups' task assignor, Kafka 4.2's StickyTaskAssignor (the
// one group.streams.assignors offers): members are grouped by process (a
// Kafka Streams instance with several threads has one member per thread);
// active tasks stay where they were while their member is within its
// quota, then go to a member that had them as standby, then to the least
// loaded process's least loaded member; standby tasks (stateful
// subtopologies only, streams.num.standby.replicas of each) never share a
// process with the task's active or another standby, and prefer the
// previous active, then a previous standby, then the least loaded
// process. Warm-up tasks are never assigned, as in Kafka 4.2.
//
// NB: Kafka breaks ties between equally loaded processes and members by
// its heaps' order; this one breaks them by process id and member id, so
// that an assignment is reproducible.

import (
	"cmp"
	"slices"
)

// streamsTask is a task: a subtopology and a partition.
type streamsTask struct {
	sub string
	p   int32
}

func compareTasks(a, b streamsTask) int {
	if c := cmp.Compare(a.sub, b.sub); c != 0 {
		return c
	}
	return cmp.Compare(a.p, b.p)
}

// taskSet is a set of tasks; for active tasks each maps to the epoch in
// which it was assigned to its member (Kafka's AssignmentEpochs), for the
// others to 0.
type taskSet map[streamsTask]int32

func (s taskSet) clone() taskSet {
	out := make(taskSet, len(s))
	for t, e := range s {
		out[t] = e
	}
	return out
}

func (s taskSet) sorted() []streamsTask {
	out := make([]streamsTask, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	slices.SortFunc(out, compareTasks)
	return out
}

func sameTasks(a, b taskSet) bool {
	if len(a) != len(b) {
		return false
	}
	for t := range a {
		if _, ok := b[t]; !ok {
			return false
		}
	}
	return true
}

// streamsTasks are a member's tasks of each kind.
type streamsTasks struct {
	active, standby, warmup taskSet
}

func newStreamsTasks() streamsTasks {
	return streamsTasks{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func (t streamsTasks) clone() streamsTasks {
	return streamsTasks{active: t.active.clone(), standby: t.standby.clone(), warmup: t.warmup.clone()}
}

func (t streamsTasks) empty() bool {
	return len(t.active) == 0 && len(t.standby) == 0 && len(t.warmup) == 0
}

func (t streamsTasks) same(o streamsTasks) bool {
	return sameTasks(t.active, o.active) && sameTasks(t.standby, o.standby) && sameTasks(t.warmup, o.warmup)
}

// containsAny reports whether t holds any task of o, of the same kind.
func (t streamsTasks) containsAny(o streamsTasks) bool {
	for _, pair := range [][2]taskSet{{t.active, o.active}, {t.standby, o.standby}, {t.warmup, o.warmup}} {
		for task := range pair[1] {
			if _, ok := pair[0][task]; ok {
				return true
			}
		}
	}
	return false
}

// streamsAssignMember is what the assignor knows of a member.
type streamsAssignMember struct {
	id, process string
	// prev is the member's previous target.
	prev streamsTasks
}

// streamsSubtopologyTasks describes a subtopology to the assignor.
type streamsSubtopologyTasks struct {
	id       string
	tasks    int32
	stateful bool
}

// stickyAssign computes a target assignment: members' ids to their tasks.
func stickyAssign(members []streamsAssignMember, subs []streamsSubtopologyTasks, standbys int) map[string]streamsTasks {
	out := map[string]streamsTasks{}
	for _, m := range members {
		out[m.id] = newStreamsTasks()
	}
	if len(members) == 0 {
		return out
	}
	a := newStickyState(members, subs, standbys)
	var active []streamsTask
	for _, s := range subs {
		for p := int32(0); p < s.tasks; p++ {
			active = append(active, streamsTask{s.id, p})
		}
	}
	a.assignActive(active)
	if standbys > 0 {
		var stateful []streamsTask
		for _, s := range subs {
			if s.stateful {
				for p := int32(0); p < s.tasks; p++ {
					stateful = append(stateful, streamsTask{s.id, p})
				}
			}
		}
		a.assignStandby(stateful)
	}
	for _, ps := range a.processes {
		for id, ts := range ps.active {
			for t := range ts {
				out[id].active[t] = 0
			}
		}
		for id, ts := range ps.standby {
			for t := range ts {
				out[id].standby[t] = 0
			}
		}
	}
	return out
}

type stickyMember struct{ id, process string }

type processState struct {
	id       string
	capacity int
	tasks    int
	counts   map[string]int // member → tasks
	order    []string       // members, sorted
	all      map[streamsTask]bool
	active   map[string]map[streamsTask]bool
	standby  map[string]map[streamsTask]bool
}

func (p *processState) load() float64 {
	if p.capacity == 0 {
		return -1
	}
	return float64(p.tasks) / float64(p.capacity)
}

func (p *processState) add(member string, t streamsTask, active bool) int {
	p.tasks++
	p.all[t] = true
	into := p.standby
	if active {
		into = p.active
	}
	if into[member] == nil {
		into[member] = map[streamsTask]bool{}
	}
	into[member][t] = true
	p.counts[member]++
	return p.counts[member]
}

func (p *processState) addToLeastLoaded(t streamsTask, active bool) int {
	best := ""
	for _, m := range p.order {
		if best == "" || p.counts[m] < p.counts[best] {
			best = m
		}
	}
	if best == "" {
		return -1
	}
	return p.add(best, t, active)
}

type stickyState struct {
	standbys                    int
	processes                   map[string]*processState
	processOrder                []string
	prevActive                  map[streamsTask]stickyMember
	prevStandby                 map[streamsTask][]stickyMember
	totalActive, total          int
	withActiveCapacity, withCap int
	activePerMember, perMember  int
}

func newStickyState(members []streamsAssignMember, subs []streamsSubtopologyTasks, standbys int) *stickyState {
	a := &stickyState{standbys: standbys, processes: map[string]*processState{},
		prevActive: map[streamsTask]stickyMember{}, prevStandby: map[streamsTask][]stickyMember{}}
	for _, s := range subs {
		a.total += int(s.tasks)
		a.totalActive += int(s.tasks)
		if s.stateful {
			a.total += int(s.tasks) * standbys
		}
	}
	a.withActiveCapacity, a.withCap = len(members), len(members)
	a.activePerMember = tasksPerMember(a.totalActive, a.withActiveCapacity)
	a.perMember = tasksPerMember(a.total, a.withCap)
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(x, y streamsAssignMember) int { return cmp.Compare(x.id, y.id) })
	for _, m := range sorted {
		ps := a.processes[m.process]
		if ps == nil {
			ps = &processState{id: m.process, counts: map[string]int{}, all: map[streamsTask]bool{},
				active: map[string]map[streamsTask]bool{}, standby: map[string]map[streamsTask]bool{}}
			a.processes[m.process] = ps
			a.processOrder = append(a.processOrder, m.process)
		}
		ps.counts[m.id] = 0
		ps.order = append(ps.order, m.id)
		ps.capacity++
		sm := stickyMember{m.id, m.process}
		for _, t := range m.prev.active.sorted() {
			a.prevActive[t] = sm
		}
		for _, t := range m.prev.standby.sorted() {
			a.prevStandby[t] = append(a.prevStandby[t], sm)
		}
	}
	slices.Sort(a.processOrder)
	return a
}

func tasksPerMember(tasks, members int) int {
	if members == 0 {
		return 0
	}
	n := tasks / members
	if tasks%members > 0 {
		n++
	}
	return n
}

func (a *stickyState) updateActivePerMember(n int) {
	if n == a.activePerMember {
		a.withActiveCapacity--
		a.totalActive -= n
		a.activePerMember = tasksPerMember(a.totalActive, a.withActiveCapacity)
	}
}

func (a *stickyState) updatePerMember(n int) {
	if n == a.perMember {
		a.withCap--
		a.total -= n
		a.perMember = tasksPerMember(a.total, a.withCap)
	}
}

// leastLoaded returns the process with the least load, by id among equals,
// skipping those skip says.
func (a *stickyState) leastLoaded(skip func(*processState) bool) *processState {
	var best *processState
	for _, id := range a.processOrder {
		p := a.processes[id]
		if skip != nil && skip(p) {
			continue
		}
		if best == nil || p.load() < best.load() {
			best = p
		}
	}
	return best
}

func (a *stickyState) assignActive(tasks []streamsTask) {
	// Sorted by partition first: a range-like assignment stays so.
	slices.SortFunc(tasks, func(x, y streamsTask) int {
		if c := cmp.Compare(x.p, y.p); c != 0 {
			return c
		}
		return cmp.Compare(x.sub, y.sub)
	})
	var rest []streamsTask
	for _, t := range tasks {
		if m, ok := a.prevActive[t]; ok {
			ps := a.processes[m.process]
			if ps.counts[m.id] < a.activePerMember {
				n := ps.add(m.id, t, true)
				a.updateActivePerMember(n)
				a.updatePerMember(n)
				continue
			}
		}
		rest = append(rest, t)
	}
	tasks, rest = rest, nil
	for _, t := range tasks {
		if m, ok := a.prevMemberWithLeastLoad(a.prevStandby[t], nil); ok {
			ps := a.processes[m.process]
			if ps.counts[m.id] < a.activePerMember {
				n := ps.add(m.id, t, true)
				a.updateActivePerMember(n)
				a.updatePerMember(n)
				continue
			}
		}
		rest = append(rest, t)
	}
	slices.SortFunc(rest, compareTasks)
	for _, t := range rest {
		ps := a.leastLoaded(nil)
		if n := ps.addToLeastLoaded(t, true); n >= 0 {
			a.updateActivePerMember(n)
			a.updatePerMember(n)
		}
	}
}

// prevMemberWithLeastLoad picks among a task's previous holders the one
// whose process and member carry the least; with t set, only in a
// process that does not hold t already.
func (a *stickyState) prevMemberWithLeastLoad(ms []stickyMember, t *streamsTask) (stickyMember, bool) {
	if len(ms) == 0 {
		return stickyMember{}, false
	}
	cand := ms[0]
	cp := a.processes[cand.process]
	candLoad, candMember := cp.load(), cp.counts[cand.id]
	for _, m := range ms[1:] {
		p := a.processes[m.process]
		if p.load() < candLoad && (t == nil || !p.all[*t]) && p.counts[m.id] < candMember {
			cand, candLoad, candMember = m, p.load(), p.counts[m.id]
		}
	}
	if t == nil || !a.processes[cand.process].all[*t] {
		return cand, true
	}
	return stickyMember{}, false
}

func (a *stickyState) assignStandby(tasks []streamsTask) {
	type toAssign struct {
		t         streamsTask
		remaining int
	}
	slices.SortFunc(tasks, func(x, y streamsTask) int {
		if c := cmp.Compare(y.p, x.p); c != 0 {
			return c
		}
		return cmp.Compare(y.sub, x.sub)
	})
	var rest []toAssign
	for _, t := range tasks {
		for i := 0; i < a.standbys; i++ {
			if m, ok := a.prevActive[t]; ok {
				ps := a.processes[m.process]
				if !ps.all[t] && ps.counts[m.id] < a.perMember {
					a.updatePerMember(ps.add(m.id, t, false))
					continue
				}
			}
			if m, ok := a.prevMemberWithLeastLoad(a.prevStandby[t], &t); ok {
				ps := a.processes[m.process]
				if ps.counts[m.id] < a.perMember {
					a.updatePerMember(ps.add(m.id, t, false))
					continue
				}
			}
			rest = append(rest, toAssign{t, a.standbys - i})
			break
		}
	}
	slices.SortFunc(rest, func(x, y toAssign) int { return compareTasks(y.t, x.t) })
	for _, r := range rest {
		for i := 0; i < r.remaining; i++ {
			ps := a.leastLoaded(func(p *processState) bool { return p.all[r.t] })
			if ps == nil {
				break // not enough processes for the standbys asked
			}
			if n := ps.addToLeastLoaded(r.t, false); n >= 0 {
				a.updatePerMember(n)
			}
		}
	}
}
