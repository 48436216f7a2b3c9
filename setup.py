from setuptools import Extension, find_packages, setup

# Two C extensions, both optional: an install without a C compiler still succeeds, and slower
# code computes the same thing (each logs which it uses).
# - the LSTMP cell's per-step pointwise work on CPU (allennlp_elmo_c/nn/lstmp_cpu.py); built for
#   the CPU it is built on (`make install` builds where it runs), rounding as torch's operators
#   do (no FMA contraction; torch's own expf and tanh, found in libtorch_cpu at run time);
# - fastText subword ids (allennlp_elmo_c/fasttext/_subwords.c), several times faster than the
#   numpy implementation that remains the fallback.
NATIVE_FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-fopenmp"]
EXTENSIONS = [
    Extension(
        "allennlp_elmo_c.nn._lstmp_cpu",
        ["allennlp_elmo_c/nn/_lstmp_cpu.c"],
        extra_compile_args=NATIVE_FLAGS,
        extra_link_args=["-fopenmp"],  # libgomp: torch's own, already loaded, where torch is
        libraries=["m"],
        optional=True,
    ),
    Extension(
        "allennlp_elmo_c.fasttext._subwords",
        ["allennlp_elmo_c/fasttext/_subwords.c"],
        extra_compile_args=["-O3"],
        optional=True,
    ),
]

# allennlp==2.10.1 and allennlp-models==2.10.1 are deliberately NOT listed in install_requires:
# their metadata pins torch<1.13, which has no Python 3.11 wheels, so pip could never resolve them.
# `make install` installs them with --no-deps on top of the pinned set in constraints.txt.
setup(
    name="allennlp-elmo-c",
    version="0.1.0",
    description=(
        "ELMo-C for AllenNLP: contextual representations trained with continuous outputs "
        "(predicting fastText vectors) instead of a softmax layer"
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(exclude=["tests", "tests.*", "experiments", "experiments.*"]),
    # spaCy's factory alone (spaCy imports it whenever it builds a pipeline), outside the package.
    py_modules=["allennlp_elmo_c_spacy"],
    python_requires=">=3.11",
    install_requires=["torch>=2.6", "numpy>=2", "scipy", "h5py", "jsonnet", "fasttext-numpy2"],
    license="Apache-2.0",
    ext_modules=EXTENSIONS,
    # spacy.load finds the `elmo_c` pipeline component without `import allennlp_elmo_c`.
    entry_points={"spacy_factories": ["elmo_c = allennlp_elmo_c_spacy:make_elmo_c"]},
)
