"""Khardon & Wachman (2007): the readings plab scores where the paper is silent or ambiguous, and
the variants that keep the other reading -- promoters' instance name (``dataset.instance_name``)."""

from __future__ import annotations

import pytest

from perceptron_lab.config.load import config_from_dict, with_overrides
from perceptron_lab.errors import ConfigError

# ----------------------------------------------------------------------------- promoters' instance name


def test_instance_name_is_a_promoters_setting_checked_by_the_schema():
    ok = config_from_dict({"dataset": {"name": "promoters", "instance_name": "nominal"}})
    assert ok.dataset.instance_name == "nominal"
    assert config_from_dict({"dataset": {"name": "promoters"}}).dataset.instance_name == "drop"
    with pytest.raises(ConfigError, match=r"dataset\.instance_name = 'nominal' with dataset\.name = 'sonar': only "
                                          r"promoters has an instance name"):
        config_from_dict({"dataset": {"name": "sonar", "instance_name": "nominal"}})
    with pytest.raises(ConfigError, match=r"dataset\.instance_name"):
        config_from_dict({"dataset": {"name": "promoters", "instance_name": "keep"}})
    # an override is checked by the same table
    with pytest.raises(ConfigError, match=r"only promoters has an instance name"):
        with_overrides(config_from_dict({"dataset": {"name": "sonar"}}), {"dataset.instance_name": "nominal"})
    # at its default it stays out of the resolved config, so recorded results keep their hash
    assert "instance_name" not in config_from_dict({"dataset": {"name": "promoters"}}).to_dict()["dataset"]
