package image

// Labels on the images hobbs builds, beside plan.LabelRole, which is on
// every object hobbs creates (sessions' containers, networks and volumes
// too); RoleImage and RoleRuntime are its values on images.
const (
	LabelInputs = "dev.hobbs.inputs"
	RoleImage   = "image"   // the Hobbs image (hobbs build, hobbs run)
	RoleRuntime = "runtime" // a runtime base (hobbs build --runtime)
)
