// The sample project's script: wag the tail when the head is touched.
#include <Log.inc>
#include <Motion.inc>
#include <Sensor.inc>
#include <Sound.inc>
#include "motions.inc"
#include "sounds.inc"

public init()
{
    print("sample: ready\n");
}

public on_sensor(time, sensor_name: sensor, value)
{
    if (sensor == SENSOR_HEAD && value == 1) {
        motion_play(mot_wag);
        sound_play(snd_chirp);
    }
}
