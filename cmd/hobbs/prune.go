package main

import (
	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/image"
)

func newPruneCmd(a *app) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove the images your hobbs built that nothing uses",
		Long: `Remove the images your hobbs build and hobbs run made (labelled
dev.hobbs.role, and dev.hobbs.user with your uid) that are no longer used:
Hobbs images of older hobbs versions or other names, and those a rebuild
replaced. It keeps the image hobbs run uses now (image in config.yaml, else
this binary's hobbs:local-<version>), every runtime base that has a name
(base_image of any instance), images with a registry name, and every image
a container still uses or another image is built on: the engine refuses
those, and prune lists them as kept. Images you built yourself, without
Hobbs's label, are never touched. Hobbs images of other users on the same
engine (or of a hobbs that did not label its user) are left, and named.

An image another instance's config.yaml names is removed too when no
container uses it; that instance's next hobbs run builds it again.`,
		Example: `  hobbs prune --dry-run     # what it would remove
  hobbs prune`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed; remove nothing")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		_, e, cfg, err := a.instanceEngine() // the defaults when there is no instance
		if err != nil {
			return err
		}
		if _, err := e.ServerVersion(cmd.Context()); err != nil {
			return err
		}
		res, err := image.Prune(cmd.Context(), e, []string{image.ImageRef(cfg.Image), cfg.BaseImage}, dryRun)
		if err != nil {
			return err
		}
		return out.print(res, res.WriteSummary)
	}
	return cmd
}
