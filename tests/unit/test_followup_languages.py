"""The offline follow-up rewrite in the language the user writes in (issue 31)."""

from __future__ import annotations

import pytest

from ragloom.generate.followup import Turn, conversation_lexicon, offline_rewrite, refers_back
from ragloom.lang.lexicon import ENGLISH, lexicon

XQUAD_LANGUAGES = ["ar", "de", "el", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"]


def ask(first: str, answer: str, follow_up: str):
    return offline_rewrite(follow_up, [Turn("user", first), Turn("assistant", answer)])


def test_a_german_pronoun_carries_the_opera_house() -> None:
    rewrite = ask("Wer hat das Opernhaus in Sydney entworfen?",
                  "Der dänische Architekt Jørn Utzon hat es entworfen.", "Wann ist er gestorben?")
    assert rewrite.method == "offline" and rewrite.query.startswith("Wann ist er gestorben? ")
    assert {"Opernhaus", "Sydney"} <= set(rewrite.added)
    assert rewrite.reason.startswith("it refers back (er)")
    assert not {"wer", "hat", "das", "wann", "ist"} & {t.lower() for t in rewrite.added}


def test_a_chinese_follow_up_carries_the_earlier_topic_whole() -> None:
    rewrite = ask("悉尼歌剧院是谁设计的？", "丹麦建筑师约恩·乌松设计了它。", "他什么时候去世的？")
    assert rewrite.method == "offline" and "他" in rewrite.reason
    assert rewrite.added[:2] == ("悉尼歌剧院", "设计")


def test_a_long_chinese_question_stands_alone_and_a_short_one_does_not() -> None:
    history = [Turn("user", "悉尼歌剧院是谁设计的？"), Turn("assistant", "约恩·乌松。")]
    assert offline_rewrite("北京国家大剧院是哪一年建成的？", history).reason == "it stands alone"
    assert "fewer than 3 words" in offline_rewrite("哪一年建成的？", history).reason


def test_a_question_without_a_subject_is_completed_by_its_length() -> None:
    spanish = ask("¿Quién diseñó la Ópera de Sídney?", "El arquitecto danés Jørn Utzon.", "¿Cuándo murió?")
    assert "Ópera de Sídney" in spanish.added and "fewer than 3 words" in spanish.reason
    arabic = ask("من صمم دار أوبرا سيدني؟", "المهندس المعماري الدنماركي يورن أوتزون.", "متى توفي؟")
    assert {"أوبرا", "سيدني"} <= set(arabic.added)


@pytest.mark.parametrize(("first", "answer", "follow_up", "pointing", "carried"), [
    ("Кто спроектировал Сиднейский оперный театр?", "Датский архитектор Йорн Утзон.", "Когда он умер?", "он",
     "театр"),
    ("Ποιος σχεδίασε την Όπερα του Σίδνεϊ;", "Ο Δανός αρχιτέκτονας Γιορν Ούτσον.", "Πότε πέθανε αυτός;", "αυτός",
     "Σίδνεϊ"),
    ("सिडनी ओपेरा हाउस का डिज़ाइन किसने बनाया?", "डेनिश वास्तुकार योर्न उटज़ोन ने।", "उनकी मृत्यु कब हुई?", "उनकी",
     "सिडनी"),
    ("Ai đã thiết kế Nhà hát Opera Sydney?", "Kiến trúc sư Jørn Utzon.", "Ông ấy mất khi nào?", "ấy", "Opera Sydney"),
    ("Cine a proiectat Opera din Sydney?", "Arhitectul danez Jørn Utzon.", "Când a murit el?", "el", "Sydney"),
    ("Sidney Opera Binası'nı kim tasarladı?", "Danimarkalı mimar Jørn Utzon.", "O ne zaman öldü?", "o", "Jørn Utzon"),
    ("ใครเป็นผู้ออกแบบโรงอุปรากรซิดนีย์", "สถาปนิกชาวเดนมาร์ก", "เขาเสียชีวิตเมื่อไหร่", "เขา", "โรงอุปรากรซิดนีย์"),
    ("シドニー・オペラハウスを設計したのは誰ですか？", "ヨーン・ウツソンです。", "彼はいつ亡くなりましたか？", "彼", "オペラハウス"),
])
def test_pronouns_point_back_in_each_language(first: str, answer: str, follow_up: str, pointing: str,
                                              carried: str) -> None:
    rewrite = ask(first, answer, follow_up)
    assert rewrite.reason.startswith(f"it refers back ({pointing}")
    assert carried in rewrite.added


def test_openers_continue_the_previous_turn() -> None:
    assert refers_back("Und in Frankreich, wie viele Einwohner hat die Hauptstadt?",
                       reading=lexicon("de")) == "it continues the previous turn"
    assert refers_back("还有澳大利亚的首都在哪里？", reading=lexicon("zh")) == "it continues the previous turn"
    # "Y" opens a Spanish follow-up; a word that merely starts with it does not.
    assert refers_back("¿Y en Francia cuántos habitantes tiene la capital?", reading=lexicon("es")) is not None
    assert refers_back("¿Yogures griegos frescos: dónde comprarlos baratos hoy?", reading=lexicon("es")) is None


def test_every_xquad_language_has_its_own_lists_and_english_keeps_its_own() -> None:
    for code in XQUAD_LANGUAGES:
        reading = lexicon(code)
        assert reading.language == code and reading.referring and len(reading.stop_words) > 50
    assert lexicon("en") is ENGLISH and lexicon("und") is ENGLISH and lexicon(None) is ENGLISH
    english = [Turn("user", "Who designed the Sydney Opera House?")]
    assert conversation_lexicon("When did he die?", english) is ENGLISH
    german = [Turn("user", "Wer hat das Opernhaus in Sydney entworfen?")]
    assert conversation_lexicon("Wann ist er gestorben?", german).language == "de"


def test_words_of_scripts_without_spaces_and_with_vowel_signs() -> None:
    chinese = lexicon("zh")
    assert chinese.words("悉尼歌剧院是谁设计的") == ["悉尼歌剧院", "是", "谁", "设计", "的"]
    # 中 and 大 are in the stop-word list but begin words: a run is not split at them.
    assert chinese.content_words("中国的大学") == ["中国", "大学"]
    assert lexicon("hi").words("उन्होंने किताबें पढ़ीं") == ["उन्होंने", "किताबें", "पढ़ीं"]
    assert lexicon("th").words("เขาเสียชีวิตเมื่อไหร่") == ["เขา", "เสียชีวิต", "เมื่อไหร่"]


def test_greek_stop_words_are_found_with_their_accents() -> None:
    greek = lexicon("el")
    assert greek.is_stop("ακόμα") and greek.is_stop("ακομα")
    assert greek.content_words("Πότε άνοιξε ακόμα η Όπερα;") == ["άνοιξε", "όπερα"]
