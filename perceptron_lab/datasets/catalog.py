"""The catalogue of datasets: each name's files, sha256 digests, download mirrors, loader,
citation and licence. :mod:`.registry` finds, checks, fetches and loads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from perceptron_lab.datasets.base import Dataset
from perceptron_lab.datasets.images import load_fashion_mnist, load_mnist
from perceptron_lab.datasets.letter import load_letter
from perceptron_lab.datasets.usps import load_usps


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset.

    ``sha256`` lists every accepted digest, the canonical download's first. ``size`` is
    the byte size of the canonical download (informational; the digest decides).
    ``confirmed`` is False when no published digest for the canonical URL was found and
    the registered one was computed from a copy with verified contents.
    """

    name: str
    sha256: tuple[str, ...]
    size: int
    urls: tuple[str, ...]
    confirmed: bool = True


@dataclass(frozen=True)
class DatasetEntry:
    """Everything the project knows about one dataset name."""

    name: str
    description: str
    subfolder: str
    files: tuple[FileSpec, ...]
    #: ``loader(folder)``; a loader with options takes them as keywords (promoters: ``instance_name``)
    loader: Callable[..., Dataset] = field(repr=False, compare=False)
    citation: str
    license: str
    embedded: bool = False  # a copy ships in perceptron_lab/datasets/embedded/

    @property
    def file_names(self) -> list[str]:
        return [f.name for f in self.files]


_LECUN = "http://yann.lecun.com/exdb/mnist/"
_OSSCI = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_ZALANDO = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_ZALANDO_KERAS = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_HASTIE = "https://hastie.su.domains/ElemStatLearn/datasets/"
_HASTIE_OLD = "https://web.stanford.edu/~hastie/ElemStatLearn/datasets/"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"

_UNCONFIRMED = (
    "the registered digest comes from a copy whose contents were checked by hand; "
    "no published digest of the canonical file was found"
)

_UCI_CITE = "Dua & Graff, UCI Machine Learning Repository (archive.ics.uci.edu)"
_UCI_LICENSE = "CC BY 4.0 (UCI Machine Learning Repository)"


def _mirrored(name: str, sha256: str | tuple[str, ...], size: int, bases: Sequence[str]) -> FileSpec:
    digests = (sha256,) if isinstance(sha256, str) else tuple(sha256)
    return FileSpec(name, digests, size, tuple(base + name for base in bases))


def _uci_file(path: str, sha256: str, size: int, confirmed: bool = True) -> FileSpec:
    return FileSpec(path.rsplit("/", 1)[-1], (sha256,), size, (_UCI + path,), confirmed)


def _uci_loader(name: str) -> Callable[..., Dataset]:
    def load(folder: Path, instance_name: str = "drop") -> Dataset:
        from perceptron_lab.datasets.uci import load_uci  # imported on first use

        if instance_name == "drop":
            return load_uci(name, Path(folder))
        return load_uci(name, Path(folder), instance_name=instance_name)

    load.__name__ = load.__qualname__ = f"load_uci_{name.replace('-', '_')}"
    return load


def _uci_entry(
    name: str,
    description: str,
    files: tuple[FileSpec, ...],
    citation: str,
    embedded: bool = False,
) -> DatasetEntry:
    return DatasetEntry(
        name=name,
        description=description,
        subfolder="uci",
        files=files,
        loader=_uci_loader(name),
        citation=f"{citation}. {_UCI_CITE}",
        license=_UCI_LICENSE,
        embedded=embedded,
    )


_ENTRIES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="mnist",
        description="MNIST handwritten digits: 60000 train / 10000 test, 28x28 pixels in 0..255, 10 classes",
        subfolder="mnist",
        files=(
            _mirrored("train-images-idx3-ubyte.gz",
                      "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422, (_LECUN, _OSSCI)),
            _mirrored("train-labels-idx1-ubyte.gz",
                      "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881, (_LECUN, _OSSCI)),
            _mirrored("t10k-images-idx3-ubyte.gz",
                      "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877, (_LECUN, _OSSCI)),
            _mirrored("t10k-labels-idx1-ubyte.gz",
                      "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542, (_LECUN, _OSSCI)),
        ),
        loader=load_mnist,
        citation="Y. LeCun, L. Bottou, Y. Bengio, P. Haffner, Gradient-based learning applied to document "
        "recognition, Proc. IEEE 86(11), 1998; data by Y. LeCun, C. Cortes, C. J. C. Burges",
        license="CC BY-SA 3.0",
    ),
    DatasetEntry(
        name="fashion-mnist",
        description="Fashion-MNIST clothing images: 60000 train / 10000 test, 28x28 pixels in 0..255, 10 classes",
        subfolder="fashion-mnist",
        # First digest: Zalando's download; second: the recompressed copy in Debian's
        # dataset-fashion-mnist package (same images and labels).
        files=(
            _mirrored("train-images-idx3-ubyte.gz",
                      ("3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
                       "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
                      26421880, (_ZALANDO, _ZALANDO_KERAS)),
            _mirrored("train-labels-idx1-ubyte.gz",
                      ("a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
                       "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"),
                      29515, (_ZALANDO, _ZALANDO_KERAS)),
            _mirrored("t10k-images-idx3-ubyte.gz",
                      ("346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
                       "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"),
                      4422102, (_ZALANDO, _ZALANDO_KERAS)),
            _mirrored("t10k-labels-idx1-ubyte.gz",
                      ("67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
                       "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"),
                      5148, (_ZALANDO, _ZALANDO_KERAS)),
        ),
        loader=load_fashion_mnist,
        citation="H. Xiao, K. Rasul, R. Vollgraf, Fashion-MNIST: a Novel Image Dataset for Benchmarking "
        "Machine Learning Algorithms, arXiv:1708.07747, 2017",
        license="MIT (Zalando Research)",
    ),
    DatasetEntry(
        name="usps",
        description="USPS handwritten digits (ESL 'zip' data): 7291 train / 2007 test, 256 features in [-1,1], 10 classes",
        subfolder="usps",
        # First digest: Hastie's files; second: text regenerated from the ElemStatLearn R
        # package with identical values (different number formatting).
        files=(
            _mirrored("zip.train.gz",
                      ("66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16",
                       "2300ec7451f8deb52ab859a0576760a6e9de93a96b46cb719fe9b6fe4f33adef"),
                      1829071, (_HASTIE, _HASTIE_OLD)),
            _mirrored("zip.test.gz",
                      ("8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f",
                       "078c098cc06a71faf904172371df3382091f616bf848656b2da40cd994163b35"),
                      439208, (_HASTIE, _HASTIE_OLD)),
        ),
        loader=load_usps,
        citation="Y. Le Cun et al., Handwritten digit recognition with a back-propagation network, NIPS 2, 1990; "
        "as distributed with T. Hastie, R. Tibshirani, J. Friedman, The Elements of Statistical Learning",
        license="no explicit license; redistributed by the ESL authors (ElemStatLearn R package: GPL-2+)",
    ),
    DatasetEntry(
        name="letter",
        description="UCI letter recognition: 20000 rows, 16 integer features, 26 classes; "
        "train = first 16000, test = last 4000 (Gentile 2001)",
        subfolder="letter",
        files=(
            _uci_file("letter-recognition/letter-recognition.data",
                      "2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2", 712565),
        ),
        loader=load_letter,
        citation="P. W. Frey, D. J. Slate, Letter recognition using Holland-style adaptive classifiers, "
        f"Machine Learning 6(2), 1991. {_UCI_CITE}",
        license=_UCI_LICENSE,
    ),
    _uci_entry(
        "adult",
        "UCI adult (census income >50K): 32561 train / 16281 test rows, mixed categorical/numeric, 2 classes",
        (
            _uci_file("adult/adult.data",
                      "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d", 3974305),
            _uci_file("adult/adult.test",
                      "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05", 2003153),
        ),
        "R. Kohavi, Scaling up the accuracy of naive-Bayes classifiers: a decision-tree hybrid, KDD 1996 "
        "(donors B. Becker, R. Kohavi)",
    ),
    _uci_entry(
        "breast-cancer-wisconsin",
        "UCI Wisconsin breast cancer (original): 699 rows, 9 integer features (16 missing values), 2 classes",
        (
            _uci_file("breast-cancer-wisconsin/breast-cancer-wisconsin.data",
                      "402c585309c399237740f635ef9919dc512cca12cbeb20de5e563a4593f22b64", 19889),
        ),
        "W. H. Wolberg, O. L. Mangasarian, Multisurface method of pattern separation for medical diagnosis "
        "applied to breast cytology, PNAS 87, 1990",
    ),
    _uci_entry(
        "bupa",
        "UCI BUPA liver disorders: 345 rows, 6 numeric features, class = 'selector' field",
        (
            _uci_file("liver-disorders/bupa.data",
                      "a166a3e7a6f4dc41aaaedc59a107e57d8adcaeb8821f0873d756982f1ea74c92", 7297, confirmed=False),
        ),
        "BUPA Medical Research Ltd., donated by R. S. Forsyth",
    ),
    _uci_entry(
        "wdbc",
        "UCI Wisconsin diagnostic breast cancer: 569 rows, 30 real features, 2 classes (B/M)",
        (
            _uci_file("breast-cancer-wisconsin/wdbc.data",
                      "d606af411f3e5be8a317a5a8b652b425aaf0ff38ca683d5327ffff94c3695f4a", 124103),
        ),
        "W. N. Street, W. H. Wolberg, O. L. Mangasarian, Nuclear feature extraction for breast tumor "
        "diagnosis, IS&T/SPIE 1993",
    ),
    _uci_entry(
        "crx",
        "UCI credit approval (crx): 690 rows, 15 mixed features (37 rows with missing values), 2 classes",
        (
            _uci_file("credit-screening/crx.data",
                      "fff49bc186cbddb3ace7371d40d9fbbb3af4f126019c13ff3f562249b1454f4d", 32218),
        ),
        "J. R. Quinlan, Simplifying decision trees, Int. J. Man-Machine Studies 27, 1987",
    ),
    _uci_entry(
        "ionosphere",
        "UCI ionosphere radar returns: 351 rows, 34 real features, 2 classes (g/b)",
        (
            _uci_file("ionosphere/ionosphere.data",
                      "46d52186b84e20be52918adb93e8fb9926b34795ff7504c24350ae0616a04bbd", 76467),
        ),
        "V. G. Sigillito, S. P. Wing, L. V. Hutton, K. B. Baker, Classification of radar returns from the "
        "ionosphere using neural networks, Johns Hopkins APL Technical Digest 10, 1989",
        embedded=True,
    ),
    _uci_entry(
        "wpbc",
        "UCI Wisconsin prognostic breast cancer: 198 rows, 33 real features (4 missing values), 2 classes (N/R)",
        (
            _uci_file("breast-cancer-wisconsin/wpbc.data",
                      "f2bd5ccdb6086fa832370dc043319907430cf6bfcfd3b96a3961a357be345c8e", 44234),
        ),
        "W. N. Street, O. L. Mangasarian, W. H. Wolberg, An inductive learning approach to prognostic "
        "prediction, ICML 1995",
    ),
    _uci_entry(
        "sonar",
        "UCI sonar (mines vs rocks): 208 rows, 60 real features in [0,1], 2 classes (M/R)",
        (
            _uci_file("undocumented/connectionist-bench/sonar/sonar.all-data",
                      "e90434cdbf00fcf93ffa911fe447ae25606979658e60f1d32e155c3b5240234d", 87776),
        ),
        "R. P. Gorman, T. J. Sejnowski, Analysis of hidden units in a layered network trained to classify "
        "sonar targets, Neural Networks 1, 1988",
        embedded=True,
    ),
    _uci_entry(
        "promoters",
        "UCI E. coli promoter gene sequences: 106 rows, 57 nucleotides each, 2 classes (+/-)",
        (
            _uci_file("molecular-biology/promoter-gene-sequences/promoters.data",
                      "9cba9e8661ab04760d69b857f62259233446f2dce5ec9b515efe0b23c315bb29", 7089, confirmed=False),
        ),
        "G. G. Towell, J. W. Shavlik, M. O. Noordewier, Refinement of approximate domain theories by "
        "knowledge-based neural networks, AAAI 1990",
    ),
)

_REGISTRY: dict[str, DatasetEntry] = {entry.name: entry for entry in _ENTRIES}
DATASET_NAMES: tuple[str, ...] = tuple(_REGISTRY)
