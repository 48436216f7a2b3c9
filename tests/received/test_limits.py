from allennlp_elmo_c.received.limits import SHOWN_CHARACTERS, printable, quoted


def test_control_characters_are_shown_as_escapes_and_other_text_kept():
    shown = printable("\x1b[2J\rok\n\u202e\x00 naïve 日本語")
    assert shown == "\\x1b[2J\\rok\\n\\u202e\\x00 naïve 日本語"
    assert all(character.isprintable() for character in shown)


def test_a_long_value_is_cut_and_its_length_said():
    shown = printable("k" * 3_000_000)
    assert shown == "k" * SHOWN_CHARACTERS + "... (3000000 characters)"
    assert quoted("abc", 2) == "'ab... (3 characters)'"
