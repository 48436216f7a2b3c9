"""`python -m experiments.demo`: the main job on the bundled demo data (see `demo.main`)."""

from experiments.demo.main import main

if __name__ == "__main__":
    main()
