package image

import "github.com/hobbs-agent/hobbs/src/plan"

// Labels on the images hobbs builds. LabelRole is on every object hobbs
// creates (plan.LabelRole: sessions' containers, networks and volumes
// too); RoleImage and RoleRuntime are its values on images.
const (
	LabelRole   = plan.LabelRole
	LabelInputs = "dev.hobbs.inputs"
	RoleImage   = "image"   // the Hobbs image (hobbs build, hobbs run)
	RoleRuntime = "runtime" // a runtime base (hobbs build --runtime)
)
