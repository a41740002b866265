package plan

import (
	"encoding/json"
	"sort"
)

// The session's seccomp profile. Whatever the agent writes in its mounts
// lands on the host with the user's uid; a file with the setuid or setgid
// bit there would give any other local account the user's uid (or group)
// the moment it runs it. No mount option prevents that on the host's side
// (nosuid holds only inside the container), so the profile makes setting
// those bits impossible in the first place: every system call that sets a
// file's mode (chmod, fchmod, fchmodat, fchmodat2, creat, open, openat,
// mknod, mknodat) is allowed only when its mode argument carries neither bit
// (for open and openat: or when it creates nothing); the calls whose mode
// the filter cannot see (openat2: the mode is in a structure behind a
// pointer; io_uring, which performs opens of its own) fail with ENOSYS, so
// programs fall back to the calls above.
//
// Everything else follows the container engine's default profile for a
// container without capabilities (the launcher drops them all): the same
// list of allowed calls, clone without namespace flags, clone3 refused with
// ENOSYS, socket without AF_VSOCK, personality with the values the default
// allows. Passing a profile replaces the engine's default, so all of it is
// spelled here.

// SeccompSource is the file the engine's CLI reads the profile from: its
// standard input, which the launcher fills (Session.output), so no profile
// file is written anywhere.
const SeccompSource = "/dev/stdin"

// Mode bits and open flags the profile tests (the same on every Linux
// architecture Hobbs builds for).
const (
	modeSetID  = 0o6000     // S_ISUID | S_ISGID
	openCreate = 0o100      // O_CREAT
	openTmp    = 0o20000000 // __O_TMPFILE (with O_DIRECTORY it is O_TMPFILE)
	enosys     = 38
)

// allowed are the system calls allowed with any arguments.
var allowed = []string{
	"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "capget", "capset", "chdir",
	"chown", "chown32", "clock_adjtime", "clock_adjtime64", "clock_getres", "clock_getres_time64",
	"clock_gettime", "clock_gettime64", "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range",
	"connect", "copy_file_range", "dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl",
	"epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2",
	"execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64",
	"fallocate", "fanotify_mark", "fchdir", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64",
	"fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstat64",
	"fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex", "futex_time64",
	"futex_waitv", "futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32",
	"geteuid", "geteuid32", "getgid", "getgid32", "getgroups", "getgroups32", "getitimer", "getpeername",
	"getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresgid32",
	"getresuid", "getresuid32", "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname",
	"getsockopt", "get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr",
	"inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl",
	"io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64", "ioprio_get", "ioprio_set",
	"io_setup", "io_submit", "ipc", "kill", "landlock_add_rule", "landlock_create_ruleset",
	"landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat", "listen", "listxattr",
	"llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64", "madvise",
	"membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mlock", "mlock2",
	"mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
	"mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap", "msgctl",
	"msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap", "name_to_handle_at",
	"nanosleep", "newfstatat", "_newselect", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64",
	"preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6", "pselect6_time64", "pwrite64",
	"pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom",
	"recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages", "removexattr", "rename", "renameat",
	"renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask",
	"rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
	"rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
	"sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval", "sched_rr_get_interval_time64",
	"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp",
	"select", "semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
	"sendfile64", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32",
	"setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid", "setpriority", "setregid",
	"setregid32", "setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32",
	"setrlimit", "set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address", "setuid",
	"setuid32", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd",
	"signalfd4", "sigprocmask", "sigreturn", "socketcall", "socketpair", "splice", "stat", "stat64",
	"statfs", "statfs64", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo",
	"tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
	"timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create", "timerfd_gettime",
	"timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
	"truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat",
	"utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid", "waitpid", "write", "writev",
	// Allowed by the default profile from Linux 4.8 on, which Hobbs needs
	// anyway: from 4.8, ptrace cannot bypass seccomp.
	"process_vm_readv", "process_vm_writev", "ptrace",
}

type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

type seccompRule struct {
	Names    []string      `json:"names"`
	Action   string        `json:"action"`
	ErrnoRet *uint         `json:"errnoRet,omitempty"`
	Args     []seccompArg  `json:"args,omitempty"`
	Includes *seccompArchs `json:"includes,omitempty"`
}

type seccompArchs struct {
	Arches []string `json:"arches,omitempty"`
}

type seccompArchMap struct {
	Architecture     string   `json:"architecture"`
	SubArchitectures []string `json:"subArchitectures"`
}

type seccompProfile struct {
	DefaultAction   string           `json:"defaultAction"`
	DefaultErrnoRet uint             `json:"defaultErrnoRet"`
	ArchMap         []seccompArchMap `json:"archMap"`
	Syscalls        []seccompRule    `json:"syscalls"`
}

// noSetID is the argument test "argument index carries no setuid/setgid bit".
func noSetID(index uint) seccompArg {
	return seccompArg{Index: index, Value: modeSetID, ValueTwo: 0, Op: "SCMP_CMP_MASKED_EQ"}
}

// createsNothing is the argument test "open flags at index create no file".
func createsNothing(index uint) seccompArg {
	return seccompArg{Index: index, Value: openCreate | openTmp, ValueTwo: 0, Op: "SCMP_CMP_MASKED_EQ"}
}

func allow(names []string, args ...seccompArg) seccompRule {
	return seccompRule{Names: names, Action: "SCMP_ACT_ALLOW", Args: args}
}

// SeccompProfile returns the session's seccomp profile as the JSON the
// engines take (docker and podman: --security-opt seccomp=FILE; compose:
// security_opt). dist/seccomp.json is this profile, for the compose file and
// the devcontainer; a test keeps the two the same.
func SeccompProfile() []byte {
	names := append([]string(nil), allowed...)
	sort.Strings(names)
	errno := uint(enosys)
	p := seccompProfile{
		DefaultAction:   "SCMP_ACT_ERRNO",
		DefaultErrnoRet: 1, // EPERM
		ArchMap: []seccompArchMap{
			{Architecture: "SCMP_ARCH_X86_64", SubArchitectures: []string{"SCMP_ARCH_X86", "SCMP_ARCH_X32"}},
			{Architecture: "SCMP_ARCH_AARCH64", SubArchitectures: []string{"SCMP_ARCH_ARM"}},
		},
		Syscalls: []seccompRule{
			allow(names),
			// Mode-setting calls, only without setuid/setgid bits.
			allow([]string{"chmod", "fchmod", "creat"}, noSetID(1)),
			allow([]string{"fchmodat", "fchmodat2"}, noSetID(2)),
			allow([]string{"mknod"}, noSetID(1)),
			allow([]string{"mknodat"}, noSetID(2)),
			// open and openat: when they create nothing, or with a mode
			// free of both bits (two rules: either allows).
			allow([]string{"open"}, createsNothing(1)),
			allow([]string{"open"}, noSetID(2)),
			allow([]string{"openat"}, createsNothing(2)),
			allow([]string{"openat"}, noSetID(3)),
			// Calls whose mode the filter cannot see: ENOSYS, so callers
			// fall back to the calls above.
			{Names: []string{"openat2", "io_uring_setup", "io_uring_enter", "io_uring_register", "clone3"},
				Action: "SCMP_ACT_ERRNO", ErrnoRet: &errno},
			// The engine's defaults for a container without capabilities.
			allow([]string{"clone"}, seccompArg{Index: 0, Value: 0x7E020000, ValueTwo: 0, Op: "SCMP_CMP_MASKED_EQ"}),
			allow([]string{"socket"}, seccompArg{Index: 0, Value: 40, Op: "SCMP_CMP_NE"}), // AF_VSOCK
		},
	}
	for _, v := range []uint64{0, 8, 0x20000, 0x20008, 0xffffffff} {
		p.Syscalls = append(p.Syscalls, allow([]string{"personality"}, seccompArg{Index: 0, Value: v, Op: "SCMP_CMP_EQ"}))
	}
	p.Syscalls = append(p.Syscalls,
		seccompRule{Names: []string{"arch_prctl"}, Action: "SCMP_ACT_ALLOW", Includes: &seccompArchs{Arches: []string{"amd64", "x32"}}},
		seccompRule{Names: []string{"modify_ldt"}, Action: "SCMP_ACT_ALLOW", Includes: &seccompArchs{Arches: []string{"amd64", "x32", "x86"}}},
		seccompRule{Names: []string{"arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2", "breakpoint", "cacheflush", "set_tls"},
			Action: "SCMP_ACT_ALLOW", Includes: &seccompArchs{Arches: []string{"arm", "arm64"}}},
	)
	b, err := json.MarshalIndent(p, "", "\t")
	if err != nil {
		panic(err) // a fixed structure of strings and numbers
	}
	return append(b, '\n')
}
